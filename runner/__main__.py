from mnnscope.runner.server import main

main()
