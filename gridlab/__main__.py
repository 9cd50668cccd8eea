from gridlab.cli import main

main()
