"""Technology data shared by every cost model, each figure with its source: SRAM energy per access
and area by capacity (`costmodel.tech.sram`, tables generated once with CACTI), DRAM kinds
(`costmodel.tech.dram`: bandwidth, energy per bit, interface area)."""

#: Technology models an accelerator may name (its TOML ``tech``; absent: the 65 nm table of
#: `costmodel.loopnest.physics` and DeepOpt's areas): "cacti22", CACTI 22 nm SRAMs
#: (`costmodel.tech.sram`) priced absolutely, the PE area scaled from 65 nm (`PE_AREA_SCALE`).
TECHS = ("cacti22",)
#: PE area scale from DeepOpt's 65 nm PE: (22 / 65)^2, ideal scaling with the feature size (our
#: assumption; CACTI's own SRAM cell area falls 7.0-8.7x from 65 to 22 nm, ideal is 8.7x).
PE_AREA_SCALE = {"cacti22": (22 / 65) ** 2}
