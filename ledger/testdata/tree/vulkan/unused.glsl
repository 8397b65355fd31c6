// Included by nothing.
float unused(float x) { return x; }
