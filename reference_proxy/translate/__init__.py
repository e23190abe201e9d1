"""Translation between the two APIs the proxy speaks, for a client of one in front of
an upstream of the other: requests on the way up, answers (whole or streamed) on the
way down. The client's own pipeline (rescue, XML for XML-reading clients, tool_choice
emulation) then runs unchanged on the translated upstream answer.

This is the proxy's own wire code, independent of the harness that judges it.
"""
