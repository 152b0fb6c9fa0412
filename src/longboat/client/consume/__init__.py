"""The machinery of consuming, below the consumer classes: their common base
(`group_consumer`: the group checked, the settings merged), the long-polling pull loop
(`pull_loop`) and each owned queue's cache (`process_queue`), which the push and the lite
pull consumer both run on, and the offset stores (`offset_store`: the broker, or a local
file for broadcasting), which the push consumer keeps its progress in (lite pull commits
positions it tracks itself).  The group's rebalance, shared too, is
`longboat.client.rebalance`: its allocation strategies are consumer settings, which this
package reads.

One copy of each mechanism, seen by both consumers: this package imports neither
`longboat.client.push` nor `longboat.client.lite_pull` (an import contract holds it).
"""
