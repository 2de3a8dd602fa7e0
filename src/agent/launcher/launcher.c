/*
 * The agent's launcher and the supervisor of every attempt it starts, compiled where the host has a
 * C compiler (launcher.ts compiles it once and keeps the program); launcher.pl otherwise, which
 * speaks the same: for each attempt the agent sends on stdin, it starts a child that joins the
 * attempt's cgroups, enters the run folder, takes the job's umask and environment, leads a session
 * of its own and execs the job. The child is made with vfork: it shares this process's memory until
 * it execs, so that no page table is copied and no page faulted in for a process that lives a few
 * system calls (a fork of this process or of perl costs about what the job's own exec costs). The
 * child therefore only makes system calls on what the parent prepared: paths, the environment, the
 * places to look for the program.
 *
 * As the jobs' parent it reaps them: the exit code (128+N for signal N, as a shell reports) goes
 * into the attempt folder's `exit`, the CPU time of the job and of what it waited for into `times`
 * when the agent asked for it, and a line to the agent on stdout while the agent is there to hear.
 * When stdin closes (the agent went away), no more attempts start; the launcher stays until its
 * last job has ended and is recorded, then exits.
 *
 * An attempt on stdin: a count N, then N fields, each ended by a NUL byte (see launcher.pl). The
 * fields: dir, times ("1": write `times`), kind: "exec" (cwd umask cgroupCount cgroupProcsFile...
 * envCount NAME=value... argv...) or "script" (the attempt's job.sh in a shell of its own).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* An attempt whose job runs: its pid, its folder, whether its CPU time goes to `times`. */
struct attempt {
  pid_t pid;
  char *dir;
  int times;
  struct attempt *next;
};

static struct attempt *running;

static void *need(void *pointer) {
  if (pointer == NULL) {
    static const char message[] = "steward launcher: out of memory\n";
    (void)!write(2, message, sizeof message - 1);
    _exit(70);
  }
  return pointer;
}

static char *joined(const char *a, const char *b, const char *c) {
  size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
  char *text = need(malloc(la + lb + lc + 1));
  memcpy(text, a, la);
  memcpy(text + la, b, lb);
  memcpy(text + la + lb, c, lc + 1);
  return text;
}

/*
 * Writes `text` over the start of a file without truncating it first (a kept folder's pid and exit
 * hold a blank line until written; the agent reads a file whole once it ends in a newline).
 */
static void record(const char *dir, const char *name, const char *text) {
  char *path = joined(dir, "/", name);
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  free(path);
  if (fd < 0) return;
  size_t length = strlen(text);
  (void)!write(fd, text, length);
  (void)!ftruncate(fd, (off_t)length);
  close(fd);
}

/*
 * A line to the agent, in one write, or none: stdout does not block (a pipe takes a short write
 * whole or not at all), so that an agent that does not read never holds up the reaping of jobs and
 * the recording of their exits; the agent finds an exit it was not told of in the folder.
 */
static void tell_agent(const char *what, long value, const char *dir) {
  char line[PATH_MAX + 64];
  int length = snprintf(line, sizeof line, "%s %ld %s\n", what, value, dir);
  if (length > 0 && (size_t)length < sizeof line) (void)!write(1, line, (size_t)length);
}

/*
 * When process `pid` started, in clock ticks since boot (field 22 of /proc/PID/stat, as the agent
 * reads it: job-process.ts), into `out`; empty when it cannot be read. The child is not reaped yet
 * (only this process reaps it), so its /proc entry is there even when it has ended.
 */
static void start_ticks(pid_t pid, char *out, size_t size) {
  out[0] = '\0';
  char path[48], text[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t length = read(fd, text, sizeof text - 1);
  close(fd);
  if (length <= 0) return;
  text[length] = '\0';
  /* The command name (field 2) may hold spaces and parentheses: count from the last ')'. */
  char *at = strrchr(text, ')');
  if (at == NULL || at[1] == '\0') return;
  at += 2; /* field 3 */
  for (int field = 3; field < 22 && at != NULL; field++) {
    at = strchr(at, ' ');
    if (at != NULL) at++;
  }
  if (at == NULL) return;
  size_t digits = strspn(at, "0123456789");
  if (digits == 0 || digits >= size) return;
  memcpy(out, at, digits);
  out[digits] = '\0';
}

/* Shell `times` output (its second line is what the agent reads): minutes and seconds. */
static void shell_time(char *out, size_t size, struct timeval spent) {
  double seconds = (double)spent.tv_sec + (double)spent.tv_usec / 1e6;
  long minutes = (long)(seconds / 60);
  snprintf(out, size, "%ldm%.3fs", minutes, seconds - 60.0 * (double)minutes);
}

/* Records the end of every child that has ended (`flags`: WNOHANG, or 0 to wait for each). */
static void reap(int flags) {
  for (;;) {
    int status;
    struct rusage usage;
    pid_t pid = wait4(-1, &status, flags, &usage);
    if (pid <= 0) {
      if (pid < 0 && errno == EINTR) continue;
      return;
    }
    struct attempt **link = &running;
    while (*link != NULL && (*link)->pid != pid) link = &(*link)->next;
    struct attempt *attempt = *link;
    if (attempt == NULL) continue;
    *link = attempt->next;
    int code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
    if (attempt->times) {
      char user[32], system[32], text[96];
      shell_time(user, sizeof user, usage.ru_utime);
      shell_time(system, sizeof system, usage.ru_stime);
      snprintf(text, sizeof text, "0m0.000s 0m0.000s\n%s %s\n", user, system);
      record(attempt->dir, "times", text);
    }
    char exit_text[16];
    snprintf(exit_text, sizeof exit_text, "%d\n", code);
    record(attempt->dir, "exit", exit_text);
    tell_agent("exited", code, attempt->dir);
    free(attempt->dir);
    free(attempt);
    if (flags == 0 && running == NULL) return;
  }
}

/* What a child does, prepared by the parent: the child only makes system calls on it. */
struct start {
  const char *stdout_path, *stderr_path;
  const char *cwd; /* NULL: a script */
  int umask;       /* -1: the launcher's own */
  char **cgroup_procs;
  int cgroups;
  char **candidates; /* the paths to try, in order, for the program (execvp's search) */
  char **argv;
  char **shell_argv; /* argv for /bin/sh when a candidate is not an executable format */
  char **envp;
  char *pwd; /* envp's PWD entry, made here */
};

static void child_fail(int code, const char *program, int error) {
  const char *parts[] = {"steward: cannot run ", program, ": ", strerror(error), "\n"};
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) (void)!write(2, parts[i], strlen(parts[i]));
  _exit(code);
}

/* In the vfork child: system calls only, on what `start` holds; never returns. */
static void run_job(const struct start *start, const sigset_t *unblocked) {
  int in = open("/dev/null", O_RDONLY);
  int out = open(start->stdout_path, O_WRONLY | O_CREAT | O_APPEND, 0666);
  int err = open(start->stderr_path, O_WRONLY | O_CREAT | O_APPEND, 0666);
  if (in < 0 || out < 0 || err < 0) _exit(126);
  if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) _exit(126);
  if (in > 2) close(in);
  if (out > 2) close(out);
  if (err > 2) close(err);
  /* The launcher ignores these; an ignored signal would be inherited through exec. */
  signal(SIGPIPE, SIG_DFL);
  signal(SIGHUP, SIG_DFL);
  signal(SIGINT, SIG_DFL);
  sigprocmask(SIG_SETMASK, unblocked, NULL);
  if (start->cwd == NULL) {
    /* job.sh makes the job's session itself (a job run as another account). */
    execve("/bin/sh", start->argv, environ);
    _exit(127);
  }
  /* First, so that everything the job makes is in its cgroups. */
  for (int i = 0; i < start->cgroups; i++) {
    int fd = open(start->cgroup_procs[i], O_WRONLY | O_APPEND);
    if (fd < 0) _exit(125);
    if (write(fd, "0\n", 2) != 2) _exit(125);
    if (close(fd) < 0) _exit(125);
  }
  if (chdir(start->cwd) < 0) _exit(126);
  if (start->umask >= 0) umask((mode_t)start->umask);
  setsid();
  /* As execvp searches: a folder where the program is not (or not reachable) is passed over, one
     where it may not be run is remembered, any other error ends the search. */
  int error = ENOENT;
  int denied = 0;
  for (char **candidate = start->candidates; *candidate != NULL; candidate++) {
    execve(*candidate, start->argv, start->envp);
    int failure = errno;
    if (failure == ENOEXEC) {
      /* A file that is no executable format runs as a shell script. */
      start->shell_argv[1] = *candidate;
      execve("/bin/sh", start->shell_argv, start->envp);
      failure = errno;
    }
    if (failure == EACCES) denied = 1;
    else if (failure != ENOENT && failure != ENOTDIR && failure != ESTALE && failure != ENODEV &&
             failure != ETIMEDOUT) {
      error = failure;
      break;
    }
  }
  if (error == ENOENT && denied) error = EACCES;
  child_fail(error == ENOENT ? 127 : 126, start->argv[0], error);
}

static int variable_named(const char *entry, const char *name, size_t length) {
  return strncmp(entry, name, length) == 0 && entry[length] == '=';
}

/*
 * The job's environment: the launcher's (the agent's), with PWD as a shell's `cd` leaves it and no
 * OLDPWD, then the job's variables over it, as job.sh's exports are.
 */
static char **environment_of(const char *cwd, char **variables, int count, char **pwd) {
  size_t inherited = 0;
  while (environ[inherited] != NULL) inherited++;
  char **envp = need(calloc(inherited + (size_t)count + 2, sizeof *envp));
  size_t at = 0;
  for (size_t i = 0; i < inherited; i++) {
    const char *entry = environ[i];
    if (variable_named(entry, "PWD", 3) || variable_named(entry, "OLDPWD", 6)) continue;
    int replaced = 0;
    for (int j = 0; j < count && !replaced; j++) {
      const char *equals = strchr(variables[j], '=');
      size_t length = equals ? (size_t)(equals - variables[j]) : strlen(variables[j]);
      replaced = variable_named(entry, variables[j], length);
    }
    if (!replaced) envp[at++] = environ[i];
  }
  *pwd = joined("PWD=", cwd, "");
  envp[at++] = *pwd;
  for (int j = 0; j < count; j++) envp[at++] = variables[j];
  envp[at] = NULL;
  return envp;
}

/* Where execvp would look for `program`, with the job's PATH (or the default one). */
static char **candidates_of(const char *program, char **envp) {
  if (strchr(program, '/') != NULL) {
    char **one = need(calloc(2, sizeof *one));
    one[0] = (char *)program;
    return one;
  }
  const char *path = "/bin:/usr/bin";
  for (char **entry = envp; *entry != NULL; entry++)
    if (variable_named(*entry, "PATH", 4)) path = *entry + 5;
  size_t parts = 1;
  for (const char *c = path; *c; c++) parts += *c == ':';
  char **list = need(calloc(parts + 1, sizeof *list));
  size_t at = 0;
  const char *begin = path;
  for (;;) {
    const char *end = strchr(begin, ':');
    size_t length = end ? (size_t)(end - begin) : strlen(begin);
    if (length == 0) list[at++] = joined(program, "", "");
    else {
      char *folder = need(strndup(begin, length));
      list[at++] = joined(folder, "/", program);
      free(folder);
    }
    if (!end) break;
    begin = end + 1;
  }
  list[at] = NULL;
  return list;
}

static void free_candidates(char **list, const char *program) {
  for (char **entry = list; *entry != NULL; entry++)
    if (*entry != program) free(*entry);
  free(list);
}

static void launch(char **fields, int count, const sigset_t *unblocked) {
  const char *dir = fields[0];
  struct start start = {0};
  start.umask = -1;
  char *stdout_path = joined(dir, "/stdout", "");
  char *stderr_path = joined(dir, "/stderr", "");
  char *script = NULL;
  char *script_argv[3] = {"sh", NULL, NULL};
  char **argv = NULL;
  start.stdout_path = stdout_path;
  start.stderr_path = stderr_path;
  int good = 0;
  if (strcmp(fields[2], "script") == 0) {
    script = joined(dir, "/job.sh", "");
    script_argv[1] = script;
    start.argv = script_argv;
    good = 1;
  } else if (strcmp(fields[2], "exec") == 0 && count >= 7) {
    start.cwd = fields[3];
    if (fields[4][0] != '\0') start.umask = (int)strtol(fields[4], NULL, 8);
    int cgroups = atoi(fields[5]);
    int at = 6 + cgroups;
    if (cgroups >= 0 && at < count) {
      start.cgroup_procs = fields + 6;
      start.cgroups = cgroups;
      int variables = atoi(fields[at]);
      int first_arg = at + 1 + variables;
      if (variables >= 0 && first_arg < count) {
        start.envp = environment_of(start.cwd, fields + at + 1, variables, &start.pwd);
        int args = count - first_arg;
        argv = need(calloc((size_t)args + 1, sizeof *argv));
        for (int i = 0; i < args; i++) argv[i] = fields[first_arg + i];
        start.argv = argv;
        start.shell_argv = need(calloc((size_t)args + 2, sizeof *start.shell_argv));
        start.shell_argv[0] = "sh";
        for (int i = 1; i < args; i++) start.shell_argv[i + 1] = argv[i];
        start.candidates = candidates_of(argv[0], start.envp);
        good = 1;
      }
    }
  }
  pid_t pid = good ? vfork() : -1;
  if (pid == 0) run_job(&start, unblocked);
  if (pid < 0) {
    record(dir, "exit", "126\n");
    tell_agent("exited", 126, dir);
  } else {
    struct attempt *attempt = need(malloc(sizeof *attempt));
    attempt->pid = pid;
    attempt->dir = need(strdup(dir));
    attempt->times = strcmp(fields[1], "1") == 0;
    attempt->next = running;
    running = attempt;
    /* The pid and its start time (what tells the job from a later process with its pid), and a
       line to the agent: started PID:TICKS DIR (PID alone when the time could not be read). */
    char ticks[32], pid_text[64], line[PATH_MAX + 96];
    start_ticks(pid, ticks, sizeof ticks);
    int length;
    if (ticks[0] != '\0') {
      snprintf(pid_text, sizeof pid_text, "%d\n%s\n", (int)pid, ticks);
      length = snprintf(line, sizeof line, "started %d:%s %s\n", (int)pid, ticks, dir);
    } else {
      snprintf(pid_text, sizeof pid_text, "%d\n", (int)pid);
      length = snprintf(line, sizeof line, "started %d %s\n", (int)pid, dir);
    }
    record(dir, "pid", pid_text);
    if (length > 0 && (size_t)length < sizeof line) (void)!write(1, line, (size_t)length);
  }
  free(stdout_path);
  free(stderr_path);
  free(script);
  if (start.candidates != NULL) free_candidates(start.candidates, argv[0]);
  free(start.pwd);
  free(start.envp);
  free(start.shell_argv);
  free(argv);
}

/* Takes the attempts that have come whole off the front of `buffer`; returns the bytes used. */
static size_t take_attempts(char *buffer, size_t length, const sigset_t *unblocked) {
  size_t used = 0;
  for (;;) {
    char *at = buffer + used;
    char *end = buffer + length;
    char *count_end = memchr(at, '\0', (size_t)(end - at));
    if (count_end == NULL) return used;
    int count = atoi(at);
    char **fields = need(calloc((size_t)(count > 0 ? count : 1), sizeof *fields));
    char *field = count_end + 1;
    int whole = 1;
    for (int i = 0; i < count; i++) {
      char *field_end = field < end ? memchr(field, '\0', (size_t)(end - field)) : NULL;
      if (field_end == NULL) {
        whole = 0;
        break;
      }
      fields[i] = field;
      field = field_end + 1;
    }
    if (!whole) {
      free(fields);
      return used;
    }
    if (count >= 3) launch(fields, count, unblocked);
    free(fields);
    used = (size_t)(field - buffer);
  }
}

int main(void) {
  int flags = fcntl(1, F_GETFL, 0);
  if (flags >= 0) fcntl(1, F_SETFL, flags | O_NONBLOCK);
  /* Only the launcher: children put them back before they exec. */
  signal(SIGPIPE, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  signal(SIGINT, SIG_IGN);
  sigset_t unblocked, children;
  sigprocmask(SIG_SETMASK, NULL, &unblocked);
  sigdelset(&unblocked, SIGCHLD);
  sigemptyset(&children);
  sigaddset(&children, SIGCHLD);
  sigprocmask(SIG_BLOCK, &children, NULL);
  int child_events = signalfd(-1, &children, SFD_CLOEXEC | SFD_NONBLOCK);
  if (child_events < 0) return 71;

  size_t size = 1 << 16, length = 0;
  char *buffer = need(malloc(size));
  int open_input = 1;
  while (open_input) {
    struct pollfd fds[2] = {{.fd = 0, .events = POLLIN}, {.fd = child_events, .events = POLLIN}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[1].revents & POLLIN) {
      struct signalfd_siginfo info;
      while (read(child_events, &info, sizeof info) > 0) {
      }
      reap(WNOHANG);
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      if (length == size) buffer = need(realloc(buffer, size *= 2));
      ssize_t got = read(0, buffer + length, size - length);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        open_input = 0;
        break;
      }
      length += (size_t)got;
      size_t used = take_attempts(buffer, length, &unblocked);
      memmove(buffer, buffer + used, length - used);
      length -= used;
    }
  }
  /* The agent went away: every job still running is seen to its end. */
  reap(WNOHANG);
  if (running != NULL) reap(0);
  return 0;
}
