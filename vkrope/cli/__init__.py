"""The `vkrope` command's parts (vkrope/__main__.py parses and runs it): the demo and device listing
(demo.py), the .npy files it reads and writes (npy_files.py), and the API's messages in its flags' words
(spelling.py)."""
