"""The group coordinator (sans-IO): both group types, offsets, timers, records out.

See ``service.GroupCoordinator``.
"""
