// Package pass is one scheduler pass (nightjar tick): reclaim orphaned
// runs, claim due jobs, admit queued runs by effective priority within the
// concurrency limits and dependencies, execute them through an Executor
// with heartbeats and fencing, and record their results with retries.
//
// It defines the small interfaces it needs — Store (implemented by package
// db; its contract is the suite in schedule/pass/storetest) and Executor
// (implemented by package jobs, dispatching on each run's Kind) — and takes
// a clock. Observers subscribe to the run events as they happen. It
// knows nothing of SQL, repositories or the real time: every decision is a
// function of what the Store returns and of Pass.Now. It must never report
// a run as succeeded that did not fully succeed, and never run a job twice
// at once.
package pass
