cwlVersion: v1.2
class: Workflow
requirements:
  ScatterFeatureRequirement: {}
inputs:
  messages: string[]
outputs:
  greetings:
    type: File[]
    outputSource: hello/greeting
steps:
  hello:
    run: hello.cwl
    scatter: message
    in:
      message: messages
    out: [greeting]
