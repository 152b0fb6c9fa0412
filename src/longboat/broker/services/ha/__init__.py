"""Master-slave replication, RocketMQ 4.x's HAService over asyncio.

A master (`brokerRole` ASYNC_MASTER or SYNC_MASTER) listens on `haListenPort` and streams its
commit log to every slave from the offset the slave reports (`master.HAMaster`); a slave
(`brokerRole` SLAVE, `brokerId` > 0) connects to its master's HA address — configured, or
learned from the name server's answer to its registration — and copies the stream into its own
store, which dispatches queues and index as it goes (`slave.HASlave`).  The wire format is
`longboat.protocol.ha`, RocketMQ's, so Longboat and Apache RocketMQ brokers replicate each
other.  A SYNC_MASTER answers a send once a slave has acknowledged its bytes
(`HAMaster.wait_replicated`).
"""
