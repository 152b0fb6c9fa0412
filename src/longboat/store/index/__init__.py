"""The key index: which commit-log records carry a message key (KEYS) or unique key (UNIQ_KEY).

Derived from the log like the consume queues, and kept by RocketMQ's design: on-disk hash
tables (`key_index`, with its slot table in `slot_table`), keyed by CRC32 of "topic#key"
(`keys`), written for each append in log order, at once or just after the append's answer
(`writer`), and asked by `query`, which keeps only the candidates whose records really match.
"""
