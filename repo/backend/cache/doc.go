// Package cache keeps local copies of the objects of a remote repository
// that every command reads again: index files, the packs that hold trees,
// and snapshot records. The copies are the objects as stored (sealed:
// never decrypted on disk), in one folder per repository ID under the
// user's cache folder, and each is checked before it is used (against its
// name, the BLAKE3 of its content; a snapshot record against its ETag); a
// copy that does not match is dropped and fetched again. A
// listing of the repository removes the copies of objects it no longer
// holds.
//
// The cache never decides what a repository holds: the backend it wraps
// does. It must never be used for a local repository (it would only copy
// the disk to itself), and never for objects whose name is not their hash
// (config, keys, locks): those can be replaced under the same name. The
// one exception are snapshot records, which nightjar tag rewrites under
// their name: a copy of one is used only when the listing just made gives
// the record's ETag and it is the MD5 of the copy, on storage that tells
// ETags (S3; see ETagLister).
package cache
