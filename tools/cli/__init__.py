"""The `kraftpy` admin CLI: one module per subcommand, each exposing `add_parser(subparsers)`."""
