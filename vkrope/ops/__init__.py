"""The operators, one module each: argument check, plan for a device's
limits, launches over bound resources, per-call tables, float64 reference.
They know no Vulkan; vkrope/runtime runs their plans."""
