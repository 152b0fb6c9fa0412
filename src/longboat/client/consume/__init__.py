"""What the push consumer and the lite pull consumer share: the long-polling pull loop
(`pull_loop`), each owned queue's cache (`process_queue`), the offset stores
(`offset_store`).  The group's rebalance, shared too, is `longboat.client.rebalance`: its
allocation strategies are consumer settings, which this package reads.

One copy of each mechanism, seen by both users: this package imports neither
`longboat.client.push` nor `longboat.client.lite_pull` (an import contract holds it).
"""
