from nccldiag.cli import main

main()
