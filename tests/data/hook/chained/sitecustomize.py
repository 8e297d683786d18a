import torch

torch.LOG.append(["chained sitecustomize ran"])
