"""Technology data shared by every cost model, each figure with its source: SRAM energy per access
and area by capacity (`costmodel.tech.sram`, tables generated once with CACTI), DRAM kinds
(`costmodel.tech.dram`: bandwidth, energy per bit, interface area)."""
