version 1.0

# One task writing a file: the greeting, in the output folder.

task hello {
  input {
    String name
  }
  command {
    echo "hello ${name}" > greeting.txt
  }
  output {
    File greeting = "greeting.txt"
  }
}

workflow hello_world {
  input {
    String name
  }
  call hello { input: name = name }
  output {
    File greeting = hello.greeting
  }
}
