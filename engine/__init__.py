"""JointLab engine: articulated rigid-body dynamics in Junggon Kim's Lie-group formulation
(SE(3), se(3), dse(3)), compiled with numba.

    import engine
    model = engine.load_urdf(path, floating_base=False)
    tau = engine.inverse_dynamics(model, q, v, a)
    a = engine.forward_dynamics(model, q, v, tau)
    a, tau = engine.hybrid_dynamics(model, q, v, prescribed, a, tau)

Conventions: twists (w, v) and wrenches (m, f) in body frames, angular part first; quaternions
(w, x, y, z); gravity (0, 0, -9.81) in the world by default.
"""
from engine import _jitcache  # noqa: F401  (must run before any kernel is defined)
from engine import _inliner
_inliner.apply()        # numba's IR inliner without its waste, when numba is the version it was written for
from engine import _latelink
_latelink.apply()       # large callees linked after the caller's optimisation, not optimised again in it
from . import _moved
_moved.install()        # old module paths (engine.simulator, engine.mjcf, ...) for one release, with a warning
from engine.errors import (ModelError, InputError, SingularInertiaError, SimulationDiverged, NameNotFound,
                           NumericalOverflow, ModelWarning, LoopFailure, RolloutDiverged)
from engine.maths.joints import Revolute, Prismatic, Helical, Universal, Spherical, Planar, Free, Fixed
from engine.multibody.model import Model, ModelBuilder, Inertia, JointInfo, Frame
from engine.maths.spatial import pose, rpy_to_rot
from engine.algorithms.api import (inverse_dynamics, forward_dynamics, hybrid_dynamics, mass_matrix,
                                   bias_forces, gravity_forces, coriolis_matrix, kinetic_energy,
                                   potential_energy, energies, forward_kinematics, body_poses, frame_pose,
                                   jacobian, body_jacobian, world_jacobian, center_of_mass, body_velocities,
                                   body_accelerations, joint_wrenches, integrate, difference)
from engine.parsers.urdf import load_urdf, load_urdf_string
from engine.parsers.mjcf import load_mjcf
from engine.loops.constraints import (PointConstraint, RevoluteConstraint, WeldConstraint, DistanceConstraint,
                                      GearConstraint, PfaffianConstraint, RollingContact, constraint_system,
                                      constraint_residual, constraint_residuals)
from engine.loops.constrained import (constrained_forward_dynamics, constrained_inverse_dynamics,
                                      constrained_hybrid_dynamics, project_constraints, constraint_wrenches,
                                      joint_reaction_wrenches, ConstraintWarning)
from engine.simulation.simulator import Simulator, INTEGRATORS
from engine.teaching.trace import trace, Trace, Step, body_quantities
from engine.teaching.equation import equation_terms, EquationTerms, contact_wrenches
from engine.stepping.input_laws import InputLaws
from engine import batch
from engine.derivatives.api import (inverse_dynamics_derivatives, forward_dynamics_derivatives,
                                    hybrid_dynamics_derivatives, constrained_forward_dynamics_derivatives,
                                    external_wrench_derivatives, linearize)
from engine.contact.geometry import Ground, Contact
from engine.multibody.scene import Scene

__all__ = [
    "ModelError", "InputError", "SingularInertiaError", "SimulationDiverged", "NameNotFound",
    "NumericalOverflow", "ModelWarning", "LoopFailure", "RolloutDiverged",
    "Revolute", "Prismatic", "Helical", "Universal", "Spherical", "Planar", "Free", "Fixed",
    "Model", "ModelBuilder", "Inertia", "JointInfo", "Frame", "pose", "rpy_to_rot",
    "inverse_dynamics", "forward_dynamics", "hybrid_dynamics", "mass_matrix", "bias_forces",
    "gravity_forces", "coriolis_matrix", "kinetic_energy", "potential_energy", "energies",
    "forward_kinematics", "body_poses", "frame_pose", "jacobian", "body_jacobian", "world_jacobian",
    "center_of_mass", "body_velocities", "body_accelerations", "joint_wrenches",
    "integrate", "difference", "Simulator", "INTEGRATORS", "InputLaws", "batch", "Ground", "Contact", "Scene",
    "load_urdf", "load_urdf_string", "load_mjcf",
    "PointConstraint", "RevoluteConstraint", "WeldConstraint", "DistanceConstraint", "GearConstraint",
    "PfaffianConstraint", "RollingContact", "constraint_system", "constraint_residual", "constraint_residuals",
    "constrained_forward_dynamics", "constrained_inverse_dynamics", "constrained_hybrid_dynamics",
    "project_constraints", "constraint_wrenches", "joint_reaction_wrenches", "ConstraintWarning",
    "trace", "Trace", "Step", "body_quantities", "equation_terms", "EquationTerms", "contact_wrenches",
    "inverse_dynamics_derivatives", "forward_dynamics_derivatives", "hybrid_dynamics_derivatives",
    "constrained_forward_dynamics_derivatives", "external_wrench_derivatives", "linearize",
]
