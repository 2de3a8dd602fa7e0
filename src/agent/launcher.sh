# The agent's launcher: one long-lived sh that starts a supervisor for each attempt folder the
# agent writes on its stdin. Forking from this small process costs far less than from Node.
# When the agent goes away, stdin closes and the launcher ends; the supervisors go on.
supervisor=$1
# No traps here: ignored signals would be inherited by every job. The launcher has a session of
# its own (no terminal signals) and writes nothing itself.
while IFS= read -r dir; do
  sh "$supervisor" "$dir" </dev/null 2>/dev/null &
done
