"""RocketMQ 5's controller (RIP-44): elects each broker group's master from its in-sync
replicas and keeps the replica state (`replicas.py`, pure) replicated among controllers
with Raft (`raft.py`, pysyncobj); `server.py` answers the remoting codes 904 and 1001-1013.
It runs standalone (`longboat controller`) or inside a name server process
(`enableControllerInNamesrv`).
"""
