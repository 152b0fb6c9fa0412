"""The client's private plumbing: the typed request layer (`api`), the instance each process
shares per name-server set (`instance`: connections, routes, heartbeats), route tables
(`route`) and the choice of the broker that serves a pull (`pull_target`).

Private so that the public classes (`Producer`, the consumers, `Admin`, `longboat.client.sync`)
can change how they talk to brokers without breaking applications; nothing here imports them.
"""
