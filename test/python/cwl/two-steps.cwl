cwlVersion: v1.2
class: Workflow
inputs:
  message: string
outputs:
  shouted:
    type: File
    outputSource: upper/shouted
steps:
  hello:
    run: hello.cwl
    in:
      message: message
    out: [greeting]
  upper:
    run: upper.cwl
    in:
      text: hello/greeting
    out: [shouted]
