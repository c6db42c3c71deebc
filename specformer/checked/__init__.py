"""Checked calls, one module per family: how a property calls an operation.

Each family's mixin sends the inputs through :meth:`specformer.context.ContextBase.call`
and checks what comes back (type, shape, dtype, device) before a property sees it.
"""
