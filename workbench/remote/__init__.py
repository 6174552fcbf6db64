"""Remote GPU hosts over SSH: the window here, the kernels on a GPU server (Qt-free).

`hosts` (configured hosts, stored in the user's settings), `ssh` (the OpenSSH client, one shared
connection per host, host keys checked), `launcher` (run workers started over ssh), `probe`
(a host's Python, workbench version, runtimes and devices), `artifacts` (the content-addressed
artifact cache on a host), `setup` (`hosts setup`: a locally built wheel installed there).
"""
