// Package restore brings a snapshot, or part of it, back into a folder,
// and with Verify reads every restored file back and compares it with the
// repository. It walks the snapshot with repo.Walk, reads through the
// narrow Repository interface and writes through FS, the OS by default.
// It is best effort: an entry that cannot be restored (damage in the
// repository, a local error) is named with its reason and the rest is
// restored; only the caller's cancellation stops it early.
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
