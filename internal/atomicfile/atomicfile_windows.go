package atomicfile

// Windows has no O_NOFOLLOW; CreateFile does not follow a file symlink created by
// another user without privileges, and the config and data dirs are the user's own.
const oNoFollow = 0

// syncDir is a no-op: Windows cannot open a directory for FlushFileBuffers, and
// MoveFileEx (os.Rename) is durable once it returns on NTFS.
func syncDir(string) error { return nil }
