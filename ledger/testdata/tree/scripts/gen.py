# writes generated/*
print("hi")
