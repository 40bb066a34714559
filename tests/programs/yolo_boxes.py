"""In the style of the box utilities of YOLOv3/v5 repositories (utils/general.py: xywh2xyxy,
box_iou, a pure-PyTorch non_max_suppression) and torchvision.ops written out: boxes converted
with clone() and slice writes, pairwise IoU through `torch.min(box1[:, None, 2:], box2[:,
2:]) - torch.max(...)).clamp(0).prod(2)`, confidence filtering with boolean masks,
`(x[:, 5:] > conf_thres).nonzero(as_tuple=False).T`, class offsets so one NMS serves every
class, greedy NMS with argsort(descending=True) and masks, `torch.max(1, keepdim=True)`, a
YOLO-style head reshaping (view/permute/contiguous, sigmoid, grid from torch.meshgrid(...,
indexing="ij")) and the CIoU-free box loss `1 - iou`; IoU and NMS checked against numpy loops."""
import numpy as np

import fusetorch as torch
import fusetorch.nn as nn


def xywh2xyxy(x):
    # Convert nx4 boxes from [x, y, w, h] to [x1, y1, x2, y2] where xy1=top-left, xy2=bottom-right
    y = x.clone() if isinstance(x, torch.Tensor) else np.copy(x)
    y[:, 0] = x[:, 0] - x[:, 2] / 2  # top left x
    y[:, 1] = x[:, 1] - x[:, 3] / 2  # top left y
    y[:, 2] = x[:, 0] + x[:, 2] / 2  # bottom right x
    y[:, 3] = x[:, 1] + x[:, 3] / 2  # bottom right y
    return y


def box_area(box):
    return (box[2] - box[0]) * (box[3] - box[1])


def box_iou(box1, box2):
    area1 = box_area(box1.T)
    area2 = box_area(box2.T)
    # inter(N,M) = (rb(N,M,2) - lt(N,M,2)).clamp(0).prod(2)
    inter = (torch.min(box1[:, None, 2:], box2[:, 2:]) -
             torch.max(box1[:, None, :2], box2[:, :2])).clamp(0).prod(2)
    return inter / (area1[:, None] + area2 - inter)  # iou = inter / (area1 + area2 - inter)


def nms(boxes, scores, iou_thres):
    order = scores.argsort(descending=True)
    keep = []
    while order.numel() > 0:
        i = order[0]
        keep.append(i.item())
        if order.numel() == 1:
            break
        ious = box_iou(boxes[i].unsqueeze(0), boxes[order[1:]])[0]
        order = order[1:][ious <= iou_thres]
    return torch.tensor(keep, dtype=torch.long)


def non_max_suppression(prediction, conf_thres=0.25, iou_thres=0.45, max_det=300):
    nc = prediction.shape[2] - 5  # number of classes
    xc = prediction[..., 4] > conf_thres  # candidates
    max_wh = 4096  # (pixels) maximum box width and height
    output = [torch.zeros((0, 6), device=prediction.device)] * prediction.shape[0]
    for xi, x in enumerate(prediction):  # image index, image inference
        x = x[xc[xi]]  # confidence
        if not x.shape[0]:
            continue
        x[:, 5:] *= x[:, 4:5]  # conf = obj_conf * cls_conf
        box = xywh2xyxy(x[:, :4])
        i, j = (x[:, 5:] > conf_thres).nonzero(as_tuple=False).T
        x = torch.cat((box[i], x[i, j + 5, None], j[:, None].float()), 1)
        conf, _ = x[:, 4:5].max(1, keepdim=True)
        n = x.shape[0]  # number of boxes
        if not n:
            continue
        x = x[x[:, 4].argsort(descending=True)]
        c = x[:, 5:6] * max_wh  # classes
        boxes, scores = x[:, :4] + c, x[:, 4]  # boxes (offset by class), scores
        keep = nms(boxes, scores, iou_thres)
        if keep.shape[0] > max_det:
            keep = keep[:max_det]
        output[xi] = x[keep]
    return output


class Detect(nn.Module):
    def __init__(self, nc=3, anchors=((10, 13), (16, 30), (33, 23)), ch=8, stride=8.0):
        super().__init__()
        self.nc, self.no, self.na = nc, nc + 5, len(anchors)
        self.stride = stride
        self.register_buffer("anchor_grid", torch.tensor(anchors).float().view(1, -1, 1, 1, 2))
        self.m = nn.Conv2d(ch, self.no * self.na, 1)

    def forward(self, x):
        x = self.m(x)
        bs, _, ny, nx = x.shape
        x = x.view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
        yv, xv = torch.meshgrid(torch.arange(ny), torch.arange(nx), indexing="ij")
        grid = torch.stack((xv, yv), 2).view(1, 1, ny, nx, 2).float()
        y = x.sigmoid()
        xy = (y[..., 0:2] * 2 - 0.5 + grid) * self.stride
        wh = (y[..., 2:4] * 2) ** 2 * self.anchor_grid
        y = torch.cat((xy, wh, y[..., 4:]), -1)
        return x, y.view(bs, -1, self.no)


def main():
    torch.manual_seed(0)
    # IoU against a numpy loop, including disjoint and identical boxes
    b1 = torch.tensor([[0.0, 0.0, 2.0, 2.0], [1.0, 1.0, 3.0, 4.0], [5.0, 5.0, 6.0, 6.0]])
    b2 = torch.tensor([[1.0, 1.0, 2.0, 2.0], [0.0, 0.0, 2.0, 2.0]])
    got = box_iou(b1, b2).numpy()
    for p, a in enumerate(b1.tolist()):
        for q, b in enumerate(b2.tolist()):
            iw = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
            ih = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
            inter = iw * ih
            union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
            assert abs(got[p, q] - inter / union) < 1e-6
    # NMS keeps the best of overlapping boxes
    boxes = torch.tensor([[0.0, 0.0, 10.0, 10.0], [1.0, 1.0, 11.0, 11.0], [20.0, 20.0, 30.0, 30.0],
                          [0.5, 0.0, 10.0, 9.5]])
    scores = torch.tensor([0.9, 0.8, 0.7, 0.95])
    assert nms(boxes, scores, 0.5).tolist() == [3, 2]
    head = Detect()
    feats = torch.randn(2, 8, 4, 4)
    raw, pred = head(feats)
    assert raw.shape == (2, 3, 4, 4, 8) and pred.shape == (2, 48, 8)
    with torch.no_grad():
        out = non_max_suppression(pred.detach().clone(), conf_thres=0.3, iou_thres=0.45)
    assert len(out) == 2 and all(o.shape[1] == 6 for o in out)
    # a box-regression step: 1 - IoU of the decoded boxes against targets
    target = xywh2xyxy(torch.tensor([[16.0, 16.0, 12.0, 20.0]]).expand(48, 4))
    optimizer = torch.optim.SGD(head.parameters(), lr=0.01, momentum=0.9)
    for _ in range(2):
        _, pred = head(feats)
        boxes = xywh2xyxy(pred[0, :, :4])
        iou = box_iou(boxes, target[:1])[:, 0]
        loss = (1.0 - iou).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()
