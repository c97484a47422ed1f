"""Technology data shared by every cost model, each figure with its source: DeepOpt's 65 nm SRAM
energy per bit, SRAM area per byte and PE area (`costmodel.tech.deepopt65`, read by the systolic
model and the loop-nest physics alike), SRAM energy per access and area by capacity at 22 nm
(`costmodel.tech.sram`, tables generated once with CACTI), DRAM kinds (`costmodel.tech.dram`:
bandwidth, energy per bit, interface area). This room imports no cost model."""

#: Technology models an accelerator may name (its TOML ``tech``; absent: DeepOpt's 65 nm SRAM
#: table and areas, `costmodel.tech.deepopt65`, as `costmodel.loopnest.physics` applies them):
#: "cacti22", CACTI 22 nm SRAMs (`costmodel.tech.sram`) priced absolutely, the PE area scaled from
#: 65 nm (`PE_AREA_SCALE`).
TECHS = ("cacti22",)
#: PE area scale from DeepOpt's 65 nm PE (`costmodel.tech.deepopt65.A_PE_UM2`): (22 / 65)^2, ideal
#: scaling with the feature size (our assumption; CACTI's own SRAM cell area falls 7.0-8.7x from 65
#: to 22 nm, ideal is 8.7x).
PE_AREA_SCALE = {"cacti22": (22 / 65) ** 2}
