cwlVersion: v1.2
class: CommandLineTool
baseCommand: [tr, "a-z", "A-Z"]
inputs:
  text:
    type: File
stdin: $(inputs.text.path)
outputs:
  shouted:
    type: stdout
stdout: shouted.txt
