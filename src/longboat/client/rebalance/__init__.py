"""Rebalancing: which member of a consumer group pulls which queues."""
