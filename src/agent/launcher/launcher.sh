# The agent's launcher: one long-lived sh that forks a supervisor (supervisor.sh) for each attempt
# folder the agent names on its stdin (it works in the attempts folder: names are short, and sh
# reads its input one byte a call). Forking from this small shell costs far less than spawning
# from Node, and a forked function needs no new sh to start. When the agent goes away, stdin
# closes and the launcher ends; the supervisors go on.
# No traps here: ignored signals would be inherited by every job. The launcher has a session of
# its own (no terminal signals) and writes nothing itself.
. "$1"
while IFS= read -r dir; do
  supervise "$dir" </dev/null 2>/dev/null &
done
