"""Campaign kinds (systolic, loopnest, npu, archsearch, tune): one class each, in a registry.

`sweep.kinds.base.CampaignKind` says what a kind answers (parse its sections, expand to tasks,
count, warm up, its tables, its report, its CLI text); `sweep.kinds.registry` lists the kinds and
finds the kind of a file, a directory or an architecture; `sweep.kinds.load` turns a campaign file
into a `sweep.config.campaign.Campaign` whose ``plan`` is its kind. This package sits above
`sweep.engine` and `sweep.config`: the CLI picks the kind, the kind drives the engine.
"""

from sweep.kinds.base import CampaignKind
from sweep.kinds.load import campaign_from_manifest, load_any, load_campaign, parse_campaign
from sweep.kinds.registry import KINDS, build_report, detect, for_arch, kind_named, print_report

__all__ = ["CampaignKind", "KINDS", "kind_named", "detect", "for_arch", "load_campaign", "parse_campaign",
           "load_any", "campaign_from_manifest", "build_report", "print_report"]
