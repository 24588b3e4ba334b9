"""SE(3), se(3), dse(3) (spatial) and the joint kinds (joints): the mathematics every algorithm inlines."""
