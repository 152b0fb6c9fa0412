"""The `longboat` command: thin wrappers over the server and client packages."""
