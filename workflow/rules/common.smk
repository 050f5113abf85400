# Shared helpers for the rules: which items exist, their parameters, their inputs and outputs.
import json


def items_of(paper):
    """Item ids of a paper, in config order."""
    return list(config["papers"].get(paper, {}))


def item_config(paper, item):
    return config["papers"][paper][item]


def item_outputs(paper, item):
    return [f"results/{paper}/{item}/{item}.html", f"results/{paper}/{item}/metrics.json"]


def paper_outputs(paper):
    return [out for item in items_of(paper) for out in item_outputs(paper, item)]


def all_item_outputs():
    return [out for paper in config["papers"] for out in paper_outputs(paper)]


def item_dataset_records(wildcards):
    names = item_config(wildcards.paper, wildcards.item).get("datasets", [])
    return [f"resources/processed/{name}.json" for name in names]


def item_params_json(wildcards):
    return json.dumps(
        {**item_config(wildcards.paper, wildcards.item), "seed": config["seed"]},
        sort_keys=True,
    )
