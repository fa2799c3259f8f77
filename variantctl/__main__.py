from variantctl.cli import main

main()
