def funcSetAttribute(ptr, attribute, value):
    pass
