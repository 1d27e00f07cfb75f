"""Runtime animation: immutable skeleton/clip data and stateless jobs over numpy arrays."""

from engine.anim.clip import Channel, Clip
from engine.anim.pose import Pose
from engine.anim.skeleton import Skeleton

__all__ = ["Channel", "Clip", "Pose", "Skeleton"]
