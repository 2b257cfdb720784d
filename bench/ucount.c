/*
 * LD_PRELOAD helper: counts the user-space cycles and instructions of the process's main thread
 * (perf_event_open, no perf tool needed) and prints them at exit on stderr:
 *   ucount: CYCLES INSTRUCTIONS
 * or "ucount: unavailable (why)". Two runs of different lengths on the same cache give the cost
 * per launch by difference (scripts/device/perlaunch.sh, PERFSTAT=1). Threads the program or a
 * library starts are not counted: the launch path runs on the application's thread.
 *   gcc -O2 -shared -fPIC -o ucount.so bench/ucount.c
 */
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <errno.h>

static int fd_cycles = -1, fd_instr = -1, open_errno;

static int open_counter(uint64_t config)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_HARDWARE;
    a.config = config;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    a.disabled = 1;
    return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
}

__attribute__((constructor)) static void ucount_start(void)
{
    fd_cycles = open_counter(PERF_COUNT_HW_CPU_CYCLES);
    fd_instr = open_counter(PERF_COUNT_HW_INSTRUCTIONS);
    if (fd_cycles < 0 || fd_instr < 0) {
        open_errno = errno;
        return;
    }
    ioctl(fd_cycles, PERF_EVENT_IOC_ENABLE, 0);
    ioctl(fd_instr, PERF_EVENT_IOC_ENABLE, 0);
}

__attribute__((destructor)) static void ucount_stop(void)
{
    if (fd_cycles < 0 || fd_instr < 0) {
        fprintf(stderr, "ucount: unavailable (%s)\n", strerror(open_errno));
        return;
    }
    uint64_t c = 0, i = 0;
    if (read(fd_cycles, &c, sizeof c) != sizeof c || read(fd_instr, &i, sizeof i) != sizeof i) {
        fprintf(stderr, "ucount: unavailable (read failed)\n");
        return;
    }
    fprintf(stderr, "ucount: %llu %llu\n", (unsigned long long)c, (unsigned long long)i);
}
