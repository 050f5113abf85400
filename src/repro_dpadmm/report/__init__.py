"""The reproduction report (claims evaluation and HTML). See issue 'The reproduction report'."""


def build_report(out_dir):
    raise NotImplementedError("the report is built by repro_dpadmm.report (not yet implemented)")
