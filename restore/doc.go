// Package restore brings a snapshot, or part of it, back into a folder,
// and with Verify reads every restored file back and compares it with the
// repository. It walks the snapshot with repo.Walk, reads through the
// narrow Repository interface and writes through FS, the OS by default.
// It is best effort: an entry that cannot be restored (damage in the
// repository, a local error) is named with its reason and the rest is
// restored. Two things stop it early: the caller's cancellation, and a
// read that the storage failed after the backend's retries
// (repo.ErrStorageUnavailable: an S3 server down, or refusing every try).
// That is no damage, and every further read would spend the retries
// again and fail alike: the restore starts no read after it, removes the
// files it was writing, gives the folders it made their metadata, counts
// nothing as damaged, and returns the failure with the Result of what it
// had restored. Verify, which reads the
// snapshot's trees again, stops at such a failure too.
//
// It must never write outside its target nor follow a symlink there: a
// name that could leave its folder is not restored, a symlink or anything
// else in the way of a folder is refused, and every entry is made under a
// fresh temporary name (O_EXCL, O_NOFOLLOW) and renamed into place. On
// Windows a name Windows would read otherwise (a backslash, a colon, a
// device name such as CON) is not restored either. What the platform
// cannot hold at all (owners on Windows) is named once, never dropped
// silently.
package restore
