package pgserver

import "syscall"

// memoryDirRoom is the free space a memory file system must have for
// MemoryDir to choose it: a test server's data is tens of megabytes, its
// databases a dozen each, and a container's /dev/shm of 64 MB would fill.
const memoryDirRoom = 2 << 30

// tmpfsMagic is the file system type statfs reports for tmpfs.
const tmpfsMagic = 0x01021994

// MemoryDir is /dev/shm when it is a memory file system (tmpfs) with at
// least 2 GiB free, else "" (the system's temporary directory): a parent
// for the directory of a server whose data is thrown away.
func MemoryDir() string {
	const dir = "/dev/shm"
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil || int64(fs.Type) != tmpfsMagic ||
		uint64(fs.Bavail)*uint64(fs.Bsize) < memoryDirRoom {
		return ""
	}
	return dir
}
