cwlVersion: v1.2
class: CommandLineTool
baseCommand: echo
inputs:
  message:
    type: string
    inputBinding: {position: 1}
outputs:
  greeting:
    type: stdout
stdout: greeting-$(inputs.message).txt
