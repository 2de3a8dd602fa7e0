# The agent's launcher: one long-lived sh that starts a supervisor for each attempt folder the
# agent writes on its stdin. Forking from this small process costs far less than from Node.
# When the agent goes away, stdin closes and the launcher ends; the supervisors go on.
supervisor=$1
trap '' PIPE HUP INT
while IFS= read -r dir; do
  sh "$supervisor" "$dir" </dev/null 2>/dev/null &
done
