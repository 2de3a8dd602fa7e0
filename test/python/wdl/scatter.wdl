version 1.0

# A task per name (a scatter), then one task gathering their files into all.txt.

task hello {
  input {
    String name
  }
  command {
    echo "hello ${name}" > greeting-${name}.txt
  }
  output {
    File greeting = "greeting-${name}.txt"
  }
}

task gather {
  input {
    Array[File] greetings
  }
  command {
    cat ${sep=" " greetings} > all.txt
  }
  output {
    File all = "all.txt"
  }
}

workflow scatter_gather {
  input {
    Array[String] names
  }
  scatter (name in names) {
    call hello { input: name = name }
  }
  call gather { input: greetings = hello.greeting }
  output {
    File all = gather.all
  }
}
