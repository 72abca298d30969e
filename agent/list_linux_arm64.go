package agent

import "syscall"

const sysFstatat = syscall.SYS_FSTATAT
