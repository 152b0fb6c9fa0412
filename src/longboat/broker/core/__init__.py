"""The broker's protocol-independent core: what a send must pass to be stored (`admission`),
the append and its durability (`append`), the one refusal type (`refusal`), the pull's read
and answer (`pull`), pop consumption (`pop`), and the rules both protocols share (retry
routing, half messages, delay levels, subscription filters).  Remoting handlers and gRPC
servicers decode a request, call the core, and encode what it returns; nothing here knows a
wire format.
"""
