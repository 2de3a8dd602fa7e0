cwlVersion: v1.2
class: CommandLineTool
doc: >
  Prints its message. Its first run (no marker file yet) makes the marker and sleeps first, long
  enough for a test to take its host down under it; a run after that prints at once.
baseCommand: [sh, -c]
arguments:
  - '[ -e "$0" ] || { touch "$0"; sleep 300; }; echo "$1"'
  - $(inputs.marker)
  - $(inputs.message)
inputs:
  marker: string
  message: string
outputs:
  said:
    type: stdout
stdout: said.txt
