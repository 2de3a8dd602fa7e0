# The supervisor of one attempt: a tiny forked copy of the launcher's sh between the launcher and
# the job, outside the job's process group so that a stop signal to the job does not reach it, and
# detached from the agent so that it outlives an agent crash. It records the job's pid (the agent
# adds its start time, since a re-adopted pid is not a child and pids are reused) and its exit code
# in the attempt folder, and tells the agent on stdout while the agent is there to hear it.
# Sourced by launcher.sh, which runs `supervise DIR &` for each attempt folder DIR holding job.sh.
supervise() {
  dir=$1
  # job.sh is read by a forked copy of this shell, which ends by exec'ing `setsid COMMAND`: the job
  # keeps that pid and leads a session (and process group) of its own.
  (. "$dir/job.sh") </dev/null >>"$dir/stdout" 2>>"$dir/stderr" &
  pid=$!
  # Only now, so that the job keeps the default SIGPIPE and SIGHUP: the supervisor must outlive
  # the agent and the pipe to it.
  trap '' PIPE HUP INT
  # One short write each: a reader takes a file as whole once it ends in a newline. Written over
  # in place (1<>, no truncation): in a kept folder (spare-folders.ts) pid and exit hold a blank
  # line until then. The agent adds the job's start time (job-process.ts): a shell would read
  # /proc one byte a call.
  echo "$pid" 1<>"$dir/pid"
  echo "started $pid $dir" 2>/dev/null
  wait "$pid"
  code=$?
  # An attempt without a cgroup has a times file (a blank line): the CPU time of the job and of what it
  # waited for (`times`, its second line) goes there, before the exit code, which the agent reads first.
  [ -f "$dir/times" ] && times 1<>"$dir/times"
  echo "$code" 1<>"$dir/exit"
  echo "exited $code $dir" 2>/dev/null
}
