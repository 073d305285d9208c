"""The thin Vulkan layer: instance, devices, memory, buffers, images, shaders,
descriptors, pipelines, command buffers, fences and timestamps.

It knows nothing about RoPE. Only `binding.py` imports the `vulkan` package.
"""
