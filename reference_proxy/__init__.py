"""The reference proxy: a streaming OpenAI-compatible proxy that rescues tool calls
written as text (``reference_proxy.app.create_app``, ``reference_proxy.config.ProxyConfig``).

Kept free of imports so that the parser (``reference_proxy.rescue``) can be used
without the HTTP stack.
"""
