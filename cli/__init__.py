"""The operator's side: the `mnemos` command line (cli.app) and the local stack of `mnemos up`."""
