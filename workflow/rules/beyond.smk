# Beyond the papers: equal-privacy frontier and empirical privacy audit (issue "Beyond the papers").


rule beyond:
    input:
        paper_outputs("beyond"),
